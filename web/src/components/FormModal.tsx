import type { ReactNode } from 'react';
import { Modal } from 'antd';

/**
 * The dialog a form creates or edits something in. Only its buttons close it, so a stray click
 * beside it does not lose what was typed, and closed it forgets its fields.
 */
export function FormModal({
  title,
  okText,
  width,
  busy,
  onSave,
  onClose,
  children,
}: {
  title: ReactNode;
  okText: string;
  width: number;
  /** The save is under way: the OK button spins. */
  busy: boolean;
  onSave: () => Promise<void>;
  onClose: () => void;
  children: ReactNode;
}) {
  return (
    <Modal
      open
      title={title}
      okText={okText}
      cancelText="取消"
      onOk={() => void onSave()}
      onCancel={onClose}
      confirmLoading={busy}
      mask={{ closable: false }}
      destroyOnHidden
      width={width}
    >
      {children}
    </Modal>
  );
}
