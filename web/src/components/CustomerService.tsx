import { Button, type ButtonProps } from 'antd';
import { CustomerServiceOutlined } from '@ant-design/icons';

/**
 * The operator's WeChat Work (企业微信) customer-service link (spec §9 "customer-service link to a
 * work-chat service"). The kfid part is the operator's own: append it when deploying.
 */
export const CUSTOMER_SERVICE_URL = 'https://work.weixin.qq.com/kfid/';

export function CustomerServiceButton(props: Omit<ButtonProps, 'href' | 'target'>) {
  return (
    <Button icon={<CustomerServiceOutlined />} href={CUSTOMER_SERVICE_URL} target="_blank" rel="noopener noreferrer" {...props}>
      {props.children ?? '联系客服'}
    </Button>
  );
}
