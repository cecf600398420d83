import { useEffect, useRef } from 'react';
import { useSearchParams, type NavigateOptions } from 'react-router';

/**
 * State kept in the URL query. Two quick edits (a click right after another) must not undo each
 * other: the second is built on what the first wrote, even when the page has not re-rendered with
 * it yet, because setSearchParams' own view of the query is that of the last render.
 */
export function useUrlState<T>(read: (p: URLSearchParams) => T, write: (value: T, current: URLSearchParams) => URLSearchParams) {
  const [params, setParams] = useSearchParams();
  const rendered = params.toString();
  const written = useRef<string | null>(null);
  useEffect(() => {
    if (written.current === rendered) written.current = null; // the page has caught up
  }, [rendered]);
  const latestParams = () => (written.current !== null && written.current !== rendered ? new URLSearchParams(written.current) : params);
  const latest = () => read(latestParams());
  /** `write` gets the query as it stands, for state that shares the URL with other state. */
  const set = (next: T, opts?: NavigateOptions) => {
    const query = write(next, new URLSearchParams(latestParams()));
    written.current = query.toString();
    setParams(query, opts);
  };
  return { value: read(params), latest, set };
}
