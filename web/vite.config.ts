import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/** Everything the API server answers; the dev server forwards these so the app runs same-origin as in production. */
const API_PREFIXES = ['/api', '/userapi', '/infra', '/upgpu', '/order', '/billing', '/shinichi', '/v1', '/dev', '/files', '/docs', '/healthz'];
const API_TARGET = 'http://localhost:8080';

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    rolldownOptions: {
      output: {
        // React changes far less often than pages: its own chunk stays cached across deploys.
        // antd is left to automatic splitting so each page chunk carries only the components it uses.
        codeSplitting: {
          groups: [{ name: 'react', test: /node_modules[\\/](react|react-dom|react-router|scheduler)[\\/]/ }],
        },
      },
    },
  },
  server: {
    // Keys starting with ^ are regexes: match whole segments so a page like /apparatus is not sent to /api.
    proxy: Object.fromEntries(API_PREFIXES.map((prefix) => [`^${prefix}(/|\\?|$)`, { target: API_TARGET }])),
  },
});
