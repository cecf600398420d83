/** The image-jobs module's public entry: how training and diffusion admit their jobs and move them. */
export * from './admit.js';
export * from './runner.js';
