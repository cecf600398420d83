export { INSTANCE_KEYS, instanceQueries, instancesApi } from './api/instances';
export { desktopUrl } from './api/terminal';
export { type DiskTarget, ExpandDiskModal } from './components/ExpandDiskModal';
export { BUSY_POLL_MS, detailPathOf, InstanceStatusTag, InstanceStatusTags, isBusy } from './components/instanceViews';
