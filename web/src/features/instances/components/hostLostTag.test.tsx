import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/react';
import { InstanceStatusTags } from './instanceViews';
import { instance } from '../../../test/fixtures/instances';

describe('an instance whose host stopped answering', () => {
  it('shows 状态未知 with 主机异常 beside it, not 操作失败', () => {
    render(<InstanceStatusTags instance={instance({ status: 'Unknown', lastError: '主机异常：主机 bj-b-1-h03 失联' })} />);
    expect(screen.getByText('状态未知')).toBeTruthy();
    expect(screen.getByText('主机异常').closest('.ant-tag')!.classList.contains('ant-tag-error')).toBe(true);
    expect(screen.queryByText('操作失败')).toBeNull();
  });

  it('keeps 操作失败 for a failed operation on a host that answers', () => {
    render(<InstanceStatusTags instance={instance({ status: 'Stopped', lastError: '开机失败' })} />);
    expect(screen.getByText('操作失败')).toBeTruthy();
    expect(screen.queryByText('主机异常')).toBeNull();
  });
});
