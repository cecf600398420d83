export { DIFFUSION_KEYS, diffusionApi, type DiffusionTaskPage } from './api/diffusion';
export { cancelOutcome, isTaskActive, Note, TaskStatusTag } from './components/diffusionViews';
