import { OrderDetailPage } from './OrderDetail';

/** /console/cost/bill/model-details/:id (id = order number): a model resource-package order. */
export default function ModelBillDetailPage() {
  return <OrderDetailPage area="model" />;
}
