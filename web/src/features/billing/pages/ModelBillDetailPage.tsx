import { useParams } from 'react-router';
import { looksLikeDayBill } from '../../model';
import { ModelDayBill } from '../components/ModelDayBill';
import { OrderDetailPage } from '../components/OrderDetail';

/**
 * /console/cost/bill/model-details/:id — an id of eight digits (YYYYMMDD) is the model bill of that
 * Beijing day; anything else is an order number: a model resource-package order.
 */
export default function ModelBillDetailPage() {
  const { id = '' } = useParams();
  return looksLikeDayBill(id) ? <ModelDayBill id={id} /> : <OrderDetailPage area="model" />;
}
