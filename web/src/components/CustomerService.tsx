import { Button, type ButtonProps } from 'antd';
import { CustomerServiceOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { catalogueQueries } from '../api/catalogue';

/**
 * The operator's WeChat Work (企业微信) customer-service link (spec §9), from the operator's
 * settings: disabled until it is known, never a guessed address.
 */
export function CustomerServiceButton(props: Omit<ButtonProps, 'href' | 'target'>) {
  const promotion = useQuery(catalogueQueries.promotion());
  const url = promotion.data?.customerServiceUrl;
  return (
    <Button icon={<CustomerServiceOutlined />} href={url} target="_blank" rel="noopener noreferrer" disabled={!url} {...props}>
      {props.children ?? '联系客服'}
    </Button>
  );
}
