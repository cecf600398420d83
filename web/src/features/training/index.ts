export { baseModelName, epochText, formatDuration, JobProgress, LoraStatusTag } from './components/trainViews';
