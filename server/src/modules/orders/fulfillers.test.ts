import { describe, expect, it } from 'vitest';
import { Fulfillers, fulfillerTable } from './fulfillers.js';
import type { OrderRow } from './rows.js';

const order = (category: string, type: OrderRow['type']) => ({ category, type, orderUid: 'O1' }) as OrderRow;

describe('fulfillers', () => {
  it('hand an order to the fulfiller of its category and type, and nothing else is on sale', async () => {
    const f = new Fulfillers(
      fulfillerTable([
        { categories: ['Gpu'], types: ['NewBuy', 'Usage'], fulfiller: { fulfil: async (o) => ({ resourceId: `new:${o.orderUid}` }) } },
        { categories: ['Gpu'], types: ['Renew'], fulfiller: { fulfil: async () => ({ resourceId: 'renewed' }) } },
      ]),
    );
    expect(await f.fulfil(order('Gpu', 'Usage'))).toEqual({ resourceId: 'new:O1' });
    expect(await f.fulfil(order('Gpu', 'Renew'))).toEqual({ resourceId: 'renewed' });
    expect(() => f.assertOnSale('Gpu', 'Renew')).not.toThrow();
    expect(() => f.assertOnSale('Gpu', 'ChangeDataDisk')).toThrow(expect.objectContaining({ code: 40020004 }));
    expect(() => f.assertOnSale('Ai', 'NewBuy')).toThrow(expect.objectContaining({ code: 40020004 }));
    await expect(f.fulfil(order('Desktop', 'NewBuy'))).rejects.toThrow('没有 Desktop 的交付方');
  });
});
