import { useParams } from 'react-router';
import { DesktopView } from '../components/DesktopView';

/** /rdp/:id — the machine's desktop in the console, with its toolbar. */
export default function RdpPage() {
  const { id = '' } = useParams();
  return <DesktopView instanceId={id} />;
}
