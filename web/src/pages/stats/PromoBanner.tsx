import { Flex, Typography } from 'antd';
import { GiftOutlined } from '@ant-design/icons';
import { CustomerServiceButton } from '../../components/CustomerService';

/** The promotion of spec §1. The server will own the figures (DESIGN: configuration); text only for now. */
export function PromoBanner() {
  return (
    <div className="promo-banner" role="note" aria-label="优惠活动">
      <Flex gap={32} wrap align="center" justify="space-between">
        <Flex gap={32} wrap align="center">
          <Typography.Title level={4} style={{ color: '#fff', margin: 0 }}>
            <GiftOutlined /> 充值返 18% 赠送金
          </Typography.Title>
          <Typography.Title level={4} style={{ color: '#fff', margin: 0 }}>
            新用户领 50 元代金券
          </Typography.Title>
        </Flex>
        <CustomerServiceButton ghost>企业微信客服</CustomerServiceButton>
      </Flex>
    </div>
  );
}
