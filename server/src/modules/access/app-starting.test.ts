/**
 * The 启动中 page 打开应用 shows while a 镜像应用 does not answer yet: it reloads itself, says what is
 * happening and what to do if it takes long, and says when the application keeps exiting, with the
 * end of its log (as text: the log is the machine's, never markup of the page).
 */
import { describe, expect, it } from 'vitest';
import type { MachineAppState } from '../../drivers/compute/types.js';
import { APP_STARTING_REFRESH_SECONDS, appStartingPage } from './app-starting.js';

const starting: MachineAppState = { port: 7860, exits: 0, running: true, upSeconds: 4, logTail: 'Loading model…\n' };

describe('the 启动中 page of an image application', () => {
  it('says the application is starting on its port, reloads itself, and says where to look if it takes long', () => {
    const page = appStartingPage(starting, 'Stable Diffusion WebUI');
    expect(page).toContain(`<meta http-equiv="refresh" content="${APP_STARTING_REFRESH_SECONDS}">`);
    expect(page).toContain('<title>应用启动中</title>');
    expect(page).toContain('Stable Diffusion WebUI正在启动');
    expect(page).toContain('已运行 4 秒');
    expect(page).toContain('7860 端口开始应答后，本页会自动打开应用');
    expect(page).toContain('tail -f /var/log/app.log');
    expect(page).toContain('<b>重启</b>实例');
    expect(page).toContain('<pre>Loading model…\n</pre>');
    expect(page).not.toContain('反复退出');
  });

  it('says how often it has exited, and once it keeps exiting, that it failed, with its log', () => {
    expect(appStartingPage({ ...starting, exits: 1, running: false })).toContain('应用已退出 1 次，控制台正在重新启动它');
    const failing = appStartingPage({ ...starting, exits: 4, running: false, logTail: 'ModuleNotFoundError: No module named torch\n' });
    expect(failing).toContain('<title>应用启动失败</title>');
    expect(failing).toContain('镜像应用反复退出（已退出 4 次）');
    expect(failing).toContain('ModuleNotFoundError: No module named torch');
    expect(failing).not.toContain('class="spin"');
  });

  it('shows the log as text, and says when it is empty', () => {
    const page = appStartingPage({ ...starting, logTail: '<script>alert(1)</script>' });
    expect(page).not.toContain('<script>');
    expect(page).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(appStartingPage({ ...starting, logTail: '' })).toContain('暂无内容');
  });
});
