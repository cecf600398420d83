/** The image-jobs module's public entry: the runner training and diffusion move their jobs with. */
export * from './runner.js';
