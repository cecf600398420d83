/**
 * The instances feature (the console's instances: lists, detail, actions and their dialogs, the
 * operation log, the terminal): what other features may use of it. Anything not exported here is its
 * own business (eslint.config.js, import-x/no-restricted-paths).
 */
export { INSTANCE_KEYS, instanceQueries, instancesApi } from './api/instances';
export { desktopUrl } from './api/terminal';
export { type DiskTarget, ExpandDiskModal } from './components/ExpandDiskModal';
export { BUSY_POLL_MS, detailPathOf, InstanceStatusTag, InstanceStatusTags, isBusy } from './components/instanceViews';
