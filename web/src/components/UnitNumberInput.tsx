import type { ReactNode } from 'react';
import { InputNumber, Space } from 'antd';

/**
 * A whole number with its unit after it (时长 月, 容量 GB, 数量 台). Clearing the box keeps the last
 * value: onChange only ever gets a number.
 */
export function UnitNumberInput({
  label,
  unit,
  min,
  max,
  value,
  onChange,
  width = 140,
}: {
  /** The aria-label. */
  label: string;
  unit: ReactNode;
  min: number;
  max: number;
  value: number;
  onChange: (value: number) => void;
  width?: number;
}) {
  return (
    <Space.Compact>
      <InputNumber aria-label={label} min={min} max={max} precision={0} value={value} onChange={(v) => v !== null && onChange(v)} style={{ width }} />
      <Space.Addon>{unit}</Space.Addon>
    </Space.Compact>
  );
}
