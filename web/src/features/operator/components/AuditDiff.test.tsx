import { describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/react';
import { AuditDiff, diffRows } from './AuditDiff';

describe('AuditDiff', () => {
  it('puts the changed fields first and keeps the unchanged ones', () => {
    const rows = diffRows({ roles: ['support'], mobile: '13900000000' }, { roles: ['support', 'finance'], mobile: '13900000000' });
    expect(rows.map((r) => [r.key, r.changed])).toEqual([
      ['roles', true],
      ['mobile', false],
    ]);
  });

  it('shows fields in Chinese with amounts in yuan and roles by name', () => {
    render(<AuditDiff before={{ roles: [], status: 'pending' }} after={{ roles: ['finance', 'ops'], status: 'approved', amount: '20000000' }} />);
    const table = screen.getByRole('table');
    const row = (name: string) => within(table).getByText(name).closest('tr')!;
    expect(row('角色').textContent).toBe('角色无财务、运维');
    expect(row('状态').textContent).toBe('状态待审批已通过');
    expect(row('金额').textContent).toBe('金额（无）¥2000.00');
  });

  it('says so when a row has nothing before or after', () => {
    render(<AuditDiff before={null} after={null} />);
    expect(screen.getByText('无前后内容')).toBeTruthy();
  });
});
