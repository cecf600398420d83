import { useState } from 'react';

/**
 * An application's cover as the server serves it. A missing or broken picture becomes a purple
 * block with the app's initial, so the gallery never shows a broken-image icon.
 */
export function AppCover({ src, name }: { src: string; name: string }) {
  const [failed, setFailed] = useState(false);
  if (!src || failed)
    return (
      <div className="app-cover-fallback" aria-hidden="true" style={{ background: gradientFor(name) }}>
        {initialOf(name)}
      </div>
    );
  return <img className="app-cover" src={src} alt={`${name} 封面`} loading="lazy" onError={() => setFailed(true)} />;
}

function initialOf(name: string): string {
  const first = Array.from(name.trim())[0];
  return first ? first.toUpperCase() : '?';
}

/** Purple-family gradients, one per app by its name, so a gallery of fallbacks is not one block repeated. */
const GRADIENTS = [
  'linear-gradient(135deg, #531dab, #9254de 60%, #d3adf7)',
  'linear-gradient(135deg, #391085, #722ed1 55%, #2f54eb)',
  'linear-gradient(135deg, #722ed1, #c41d7f)',
  'linear-gradient(135deg, #22075e, #531dab 50%, #13c2c2)',
  'linear-gradient(135deg, #9254de, #eb2f96)',
  'linear-gradient(135deg, #10239e, #722ed1)',
];

function gradientFor(name: string): string {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)!) >>> 0;
  return GRADIENTS[hash % GRADIENTS.length]!;
}
