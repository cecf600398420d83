import { useEffect } from 'react';
import { Outlet, useNavigation } from 'react-router';
import { useRouteTitle } from './useRouteTitle';

const APP_TITLE = '算力云控制台';

/** The top of the tree: document title, and a thin bar while a page chunk or loader is pending. */
export function RootShell() {
  const navigation = useNavigation();
  const title = useRouteTitle();
  useEffect(() => {
    document.title = title ? `${title} - ${APP_TITLE}` : APP_TITLE;
  }, [title]);
  return (
    <>
      {navigation.state !== 'idle' && <div className="nav-progress" role="progressbar" aria-label="页面加载中" />}
      <Outlet />
    </>
  );
}
