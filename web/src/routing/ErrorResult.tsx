import type { ReactNode } from 'react';
import { Flex, theme } from 'antd';
import { CloseCircleFilled, QuestionCircleFilled } from '@ant-design/icons';

/**
 * antd's Result for errors, drawn with an icon instead of its illustrations: Result imports all
 * of them (about 10 KB brotli) wherever it is used, and the error views are part of the first page.
 */
export function ErrorResult({ title, subTitle, extra, notFound = false }: { title: ReactNode; subTitle?: ReactNode; extra?: ReactNode; notFound?: boolean }) {
  const { token } = theme.useToken();
  const Icon = notFound ? QuestionCircleFilled : CloseCircleFilled;
  return (
    <Flex vertical align="center" style={{ padding: '48px 32px', textAlign: 'center' }}>
      <Icon style={{ fontSize: 72, marginBottom: 24, color: notFound ? token.colorTextQuaternary : token.colorError }} />
      <div style={{ color: token.colorTextHeading, fontSize: token.fontSizeHeading3, lineHeight: token.lineHeightHeading3, margin: '8px 0' }}>{title}</div>
      {subTitle && <div style={{ color: token.colorTextDescription, fontSize: token.fontSize }}>{subTitle}</div>}
      {extra && (
        <Flex gap={8} justify="center" wrap style={{ marginTop: 24 }}>
          {extra}
        </Flex>
      )}
    </Flex>
  );
}
