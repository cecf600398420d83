import { Alert, Button } from 'antd';
import { useNavigate } from 'react-router';
import { PAGE } from '@console/contract';
import { ApiError } from '../api/errors';

/** The server's 现金余额不足 answer as the alert shows it: its message, and what it adds (how much is missing). */
export const cashShortText = (error: ApiError) => (error.detail ? `${error.message}：${error.detail}` : error.message);

/**
 * 现金余额不足 where the money would have been spent (a generation, a training start, a workflow run):
 * what the server said, with 去充值 to the recharge page. The bonus balance does not count, so the
 * balance in the header may look enough: the text says why.
 */
export function CashShortAlert({ message }: { message: string }) {
  const navigate = useNavigate();
  return (
    <Alert
      type="error"
      showIcon
      title={message}
      action={
        <Button size="small" type="primary" onClick={() => navigate(PAGE.recharge)}>
          去充值
        </Button>
      }
    />
  );
}
