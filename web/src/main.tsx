import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter } from 'react-router';
import { RouterProvider } from 'react-router/dom';
import { ApiUiBridge } from './app/ApiUiBridge';
import { AppProviders } from './app/AppProviders';
import { SessionBootstrap } from './app/SessionBootstrap';
import { trackLocation } from './auth/guardLoader';
import { queryClient } from './queryClient';
import { createRoutes } from './routes';
import './styles.css';

const router = createBrowserRouter(createRoutes());
trackLocation(router);
const navigate = (to: string) => void router.navigate(to);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <AppProviders queryClient={queryClient}>
      <ApiUiBridge navigate={navigate} />
      <SessionBootstrap />
      <RouterProvider router={router} />
    </AppProviders>
  </StrictMode>,
);
