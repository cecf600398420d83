import { OrderDetailPage } from '../components/OrderDetail';

/** /console/cost/bill/server-details/:id (id = order number): a GPU, CPU, desktop… order. */
export default function ServerBillDetailPage() {
  return <OrderDetailPage area="server" />;
}
