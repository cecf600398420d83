/// <reference types="vite/client" />

/** Addresses of the other services of spec §7; each defaults to the console's own origin. */
interface ImportMetaEnv {
  readonly VITE_API_BASE?: string;
  readonly VITE_COMMUNITY_API_BASE?: string;
  readonly VITE_WORKFLOW_BASE?: string;
  readonly VITE_PREVIEW_BASE?: string;
  readonly VITE_UPLOAD_BASE?: string;
  readonly VITE_SAVE_API_BASE?: string;
  readonly VITE_CLOUD_API_BASE?: string;
  readonly VITE_RDP_WS_BASE?: string;
  readonly VITE_HELP_SITE?: string;
  readonly VITE_LOGIN_PORTAL?: string;
  readonly VITE_HOME_SITE?: string;
}
interface ImportMeta {
  readonly env: ImportMetaEnv;
}
