import type { FormRule } from 'antd';
import { PASSWORD_RULE } from '@console/contract';

/** A new password as the account pages check it: the contract's length, letters and digits, no spaces. */
export function passwordRules(empty: string): FormRule[] {
  return [
    { required: true, message: empty },
    { min: PASSWORD_RULE.min, max: PASSWORD_RULE.max, message: `密码为 ${PASSWORD_RULE.min}-${PASSWORD_RULE.max} 位` },
    { pattern: /^(?=.*[A-Za-z])(?=.*\d)\S+$/, message: '密码须同时包含字母和数字，且不含空格' },
  ];
}

/** 确认新密码: it must repeat the form's password field (list that field in its dependencies). */
export const confirmPasswordRules: FormRule[] = [
  { required: true, message: '请再次输入新密码' },
  ({ getFieldValue }) => ({
    validator: async (_, value: string | undefined) => {
      if (value && value !== getFieldValue('password')) throw new Error('两次输入的密码不一致');
    },
  }),
];
