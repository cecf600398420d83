import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { OPERATOR_KEYS } from '../../account';
import { isApiError } from '../../../api/errors';
import { USER_KEYS } from '../../../api/user';

const refused = (error: unknown) => isApiError(error) && error.status === 403;

/**
 * An operator request refused with 403 means the role may have been taken (`npm run operator --
 * revoke`): fetch the user again at once, so the menu and the route guard follow without a reload.
 */
export function useRoleRefreshOnRefusal() {
  const queryClient = useQueryClient();
  useEffect(() => {
    const refresh = () => void queryClient.invalidateQueries({ queryKey: USER_KEYS.me });
    const offQueries = queryClient.getQueryCache().subscribe((e) => {
      if (e.type === 'updated' && e.action.type === 'error' && e.query.queryKey[0] === OPERATOR_KEYS.all[0] && refused(e.action.error)) refresh();
    });
    // The area's decisions (reviews, invoices) are its only mutations while it is open.
    const offMutations = queryClient.getMutationCache().subscribe((e) => {
      if (e.type === 'updated' && e.action.type === 'error' && refused(e.action.error)) refresh();
    });
    return () => {
      offQueries();
      offMutations();
    };
  }, [queryClient]);
}
