import { Link } from 'react-router';
import { ThunderboltFilled } from '@ant-design/icons';
import { PAGE } from '@console/contract';

export function Logo({ light = false }: { light?: boolean }) {
  return (
    <Link to={PAGE.cloudGpu} className="brand" style={{ color: light ? '#fff' : undefined }}>
      <ThunderboltFilled className="brand-icon" />
      <span>算力云</span>
    </Link>
  );
}
