/**
 * The training feature (LoRA 训练: jobs, their form and quotes): what other features may use of it.
 * Anything not exported here is its own business (eslint.config.js, import-x/no-restricted-paths).
 */
export { baseModelName, epochText, formatDuration, JobProgress, LoraStatusTag } from './components/trainViews';
