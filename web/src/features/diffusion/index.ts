/**
 * The diffusion feature (LoRA 生图: image tasks, their gallery and quotes): what other features may use
 * of it. Anything not exported here is its own business (eslint.config.js, import-x/no-restricted-
 * paths).
 */
export { DIFFUSION_KEYS, diffusionApi, type DiffusionTaskPage } from './api/diffusion';
export { cancelOutcome, isTaskActive, Note, TaskStatusTag } from './components/diffusionViews';
