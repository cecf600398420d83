import { useParams } from 'react-router';
import { DesktopView } from '../components/DesktopView';

/** /free/:id — the same desktop alone in the whole window, without the console frame. */
export default function FreeDesktopPage() {
  const { id = '' } = useParams();
  return <DesktopView instanceId={id} bare />;
}
