/**
 * The services the console talks to (spec §7). Only `main` is used so far; the others are
 * configured here so later pages pick a base by name instead of hard-coding an address.
 * Every address comes from a VITE_* variable and defaults to the console's own origin.
 */
export type BaseName = 'main' | 'community' | 'workflow' | 'preview' | 'upload' | 'save' | 'cloud';

export interface BaseConfig {
  url: string;
  /** Milliseconds before the call is abandoned with '请求超时'. */
  timeout: number;
  /** How an array in the query is written: a=1,2 or a=1&a=2. */
  arrayFormat: 'comma' | 'repeat';
  /** Whether the session token may be sent: only to our own services. */
  sendToken: boolean;
}

const env = import.meta.env;
const MAIN_TIMEOUT = 30_000;
const SHORT_TIMEOUT = 3_000;

export const BASES: Record<BaseName, BaseConfig> = {
  // Lists travel comma-joined like filterBy (spec §3).
  main: { url: env.VITE_API_BASE ?? '', timeout: MAIN_TIMEOUT, arrayFormat: 'comma', sendToken: true },
  // The community/club API expects repeated keys and answers fast or not at all (spec §7).
  community: { url: env.VITE_COMMUNITY_API_BASE ?? '', timeout: SHORT_TIMEOUT, arrayFormat: 'repeat', sendToken: false },
  workflow: { url: env.VITE_WORKFLOW_BASE ?? '', timeout: MAIN_TIMEOUT, arrayFormat: 'comma', sendToken: true },
  preview: { url: env.VITE_PREVIEW_BASE ?? '', timeout: MAIN_TIMEOUT, arrayFormat: 'comma', sendToken: true },
  upload: { url: env.VITE_UPLOAD_BASE ?? '', timeout: MAIN_TIMEOUT, arrayFormat: 'comma', sendToken: true },
  save: { url: env.VITE_SAVE_API_BASE ?? '', timeout: SHORT_TIMEOUT, arrayFormat: 'comma', sendToken: true },
  cloud: { url: env.VITE_CLOUD_API_BASE ?? '', timeout: MAIN_TIMEOUT, arrayFormat: 'comma', sendToken: true },
};

/** Addresses that are opened or linked to rather than fetched. */
export const SITES = {
  rdpWebsocket: env.VITE_RDP_WS_BASE ?? '',
  help: env.VITE_HELP_SITE ?? '',
  loginPortal: env.VITE_LOGIN_PORTAL ?? '',
  home: env.VITE_HOME_SITE ?? '/',
};
