import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useLocation, useNavigate } from 'react-router';
import { PAGE, type GpuSubscriptionRequest } from '@console/contract';
import { NOTICE_KEYS, noticesApi } from '../../../api/notices';
import { useSession } from '../../../session/useSession';

/**
 * 有卡时通知我: subscribes to free cards of a GPU type in a region (the server notices once). A
 * visitor is sent to log in first and comes back here.
 */
export function useGpuSubscribe() {
  const { loggedIn } = useSession();
  const navigate = useNavigate();
  const { pathname, search } = useLocation();
  const queryClient = useQueryClient();
  const m = useMutation({
    mutationFn: (req: GpuSubscriptionRequest) => noticesApi.subscribe(req),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: NOTICE_KEYS.subscriptions }),
  });
  return {
    subscribe(req: GpuSubscriptionRequest) {
      if (!loggedIn) return void navigate(`${PAGE.login}?redirect=${encodeURIComponent(pathname + search)}`);
      m.mutate(req);
    },
    /** Whether a subscription like this one is on its way (the button spins). */
    pending: (req: Pick<GpuSubscriptionRequest, 'gpuTypeId' | 'regionId'>) =>
      m.isPending && m.variables?.gpuTypeId === req.gpuTypeId && m.variables.regionId === req.regionId,
  };
}
