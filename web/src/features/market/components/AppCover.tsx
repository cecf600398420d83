import { useState } from 'react';

/**
 * An application's cover as the server serves it. A missing or broken picture becomes a block in
 * the theme's colour with the app's initial, so the gallery never shows a broken-image icon.
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

/** The theme's colour (antd's CSS variables, see styles.css) and its darker steps. */
const PRIMARY = 'var(--ant-color-primary)';
const PRIMARY_DARK = 'var(--ant-color-primary-active)';
const PRIMARY_DARKER = 'color-mix(in srgb, var(--ant-color-primary-active) 70%, black)';
const PRIMARY_DARKEST = 'color-mix(in srgb, var(--ant-color-primary-active) 45%, black)';
const PRIMARY_LIGHT = 'var(--ant-color-primary-hover)';

/** Gradients from the theme's colour, one per app by its name, so a gallery of fallbacks is not one block repeated. */
const GRADIENTS = [
  `linear-gradient(135deg, ${PRIMARY_DARK}, ${PRIMARY_LIGHT} 60%, var(--ant-color-primary-border))`,
  `linear-gradient(135deg, ${PRIMARY_DARKER}, ${PRIMARY} 55%, #2f54eb)`,
  `linear-gradient(135deg, ${PRIMARY}, #c41d7f)`,
  `linear-gradient(135deg, ${PRIMARY_DARKEST}, ${PRIMARY_DARK} 50%, #13c2c2)`,
  `linear-gradient(135deg, ${PRIMARY_LIGHT}, #eb2f96)`,
  `linear-gradient(135deg, #10239e, ${PRIMARY})`,
];

function gradientFor(name: string): string {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)!) >>> 0;
  return GRADIENTS[hash % GRADIENTS.length]!;
}
