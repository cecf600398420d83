import { Button, type ButtonProps } from 'antd';
import { CustomerServiceOutlined } from '@ant-design/icons';
import { useCustomerServiceUrl } from '../api/site';

/**
 * The operator's WeChat Work (企业微信) customer-service link (spec §9), from the operator's site
 * settings. Not shown at all while it is unknown or when the operator has not set one: never a
 * guessed or placeholder address.
 */
export function CustomerServiceButton(props: Omit<ButtonProps, 'href' | 'target'>) {
  const url = useCustomerServiceUrl();
  if (!url) return null;
  return (
    <Button icon={<CustomerServiceOutlined />} href={url} target="_blank" rel="noopener noreferrer" {...props}>
      {props.children ?? '联系客服'}
    </Button>
  );
}
