import { Select, type SelectProps } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import type { Image } from '@console/contract';
import { LoadError } from '../../../components/LoadError';

/** "PyTorch 2.1（Python 3.10 · CUDA 12.1 · Ubuntu 22.04）": what a buyer compares images by. */
export function imageLabel(i: Image): string {
  const parts = [i.python && `Python ${i.python}`, i.cuda && `CUDA ${i.cuda}`, i.os !== i.name && i.os].filter(Boolean);
  return parts.length ? `${i.name}（${parts.join(' · ')}）` : i.name;
}

/** The default image: an offered framework one when there is any (what most GPU buyers want), else the first offered. */
export function defaultImage(images: Image[]): Image | undefined {
  const offered = images.filter((i) => !i.unavailable);
  return offered.find((i) => i.kind === 'framework') ?? offered[0];
}

/** An image the host lacks (the market on a real host) is listed, not chosen: its label says why. */
function groupedOptions(images: Image[]): SelectProps['options'] {
  const option = (i: Image) => ({
    value: i.id,
    label: i.unavailable ? `${imageLabel(i)}：${i.unavailable}` : imageLabel(i),
    disabled: !!i.unavailable,
  });
  const frameworks = images.filter((i) => i.kind === 'framework').map(option);
  const systems = images.filter((i) => i.kind === 'os').map(option);
  if (!frameworks.length || !systems.length) return images.map(option);
  return [
    { label: '框架镜像', title: '框架镜像', options: frameworks },
    { label: '基础镜像', title: '基础镜像', options: systems },
  ];
}

export function ImageSelect({
  query,
  value,
  empty,
  onChange,
}: {
  query: UseQueryResult<Image[]>;
  value: string | undefined;
  empty: string;
  onChange: (id: string) => void;
}) {
  if (query.isError) return <LoadError error={query.error} onRetry={() => void query.refetch()} />;
  return (
    <Select
      aria-label="镜像"
      showSearch={{ optionFilterProp: 'label' }}
      loading={query.isPending}
      value={query.isPending ? undefined : value}
      placeholder={query.isPending ? '加载中…' : empty}
      style={{ width: '100%', maxWidth: 520 }}
      onChange={onChange}
      options={groupedOptions(query.data ?? [])}
    />
  );
}
