import type { SmsScene } from '@console/contract';
import { userApi } from '../../../api/user';
import { CodeButton } from '../../../components/CodeButton';

/** '获取验证码' for a mobile number and an SMS scene. */
export function SmsCodeButton({ scene, getMobile }: { scene: SmsScene; getMobile: () => Promise<string> }) {
  return <CodeButton getTarget={getMobile} send={(mobile) => userApi.sendSmsCode({ mobile, scene })} />;
}
