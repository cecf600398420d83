import { useState, type ReactNode } from 'react';
import { Alert, App, Button, Descriptions, Flex, Form, Input, Result, Segmented, Space, Spin } from 'antd';
import { UploadOutlined } from '@ant-design/icons';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { CertType, creditCodeProblem, residentIdProblem, type CertifyInfo, type EnterpriseCertify, type PersonalCertify } from '@console/contract';
import { ACCOUNT_KEYS, certifyApi, accountQueries } from '../api/account';
import { CERT_RETURN_KEY } from '../../../api/client';
import { userApi } from '../../../api/user';
import { LoadError } from '../../../components/LoadError';
import { session } from '../../../session/store';
import { ReviewImageUpload } from './ReviewImageUpload';

type Kind = 'Personal' | 'Enterprise';

/** The checkInfo tab: personal (instant, by the verifier) or enterprise (licence, operator review). */
export function CertificationTab() {
  const query = useQuery(accountQueries.certify());
  const [kind, setKind] = useState<Kind | null>(null);
  if (query.isPending) return <Spin style={{ display: 'block', margin: 48 }} />;
  if (query.isError) return <LoadError error={query.error} onRetry={() => query.refetch()} />;
  const info = query.data;
  if (info.certified && !(info.certType === 'Personal' && kind === 'Enterprise')) return <Certified info={info} onUpgrade={() => setKind('Enterprise')} />;
  const shown: Kind =
    kind ?? (info.enterprise && info.enterprise.status !== 'Succeed' && !info.certified ? 'Enterprise' : info.certified ? 'Enterprise' : 'Personal');
  return (
    <Flex vertical gap={16} style={{ maxWidth: 640 }}>
      {!info.certified && (
        <Segmented<Kind>
          value={shown}
          onChange={setKind}
          options={[
            { label: CertType.label('Personal'), value: 'Personal' },
            { label: CertType.label('Enterprise'), value: 'Enterprise' },
          ]}
        />
      )}
      {shown === 'Personal' ? <PersonalFlow info={info} /> : <EnterpriseFlow info={info} />}
    </Flex>
  );
}

/** After a success: refresh the user everywhere and go back to where the real-name gate sent us from. */
function useCertified() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { message } = App.useApp();
  return async (info: CertifyInfo) => {
    if (info.certified) {
      const me = await userApi.me().catch(() => null);
      if (me) session.setUser(me);
      const back = sessionStorage.getItem(CERT_RETURN_KEY);
      sessionStorage.removeItem(CERT_RETURN_KEY);
      message.success(back ? '实名认证成功，已返回之前的页面' : '实名认证成功');
      // Before the cache update: that re-renders this form away, and navigation must not depend on it.
      if (back) navigate(back, { replace: true });
    }
    queryClient.setQueryData(ACCOUNT_KEYS.certify, info);
  };
}

/** One step of a flow: the call, its spinner, leaving edit mode, and what a success means. */
function useStep() {
  const done = useCertified();
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const run = async (call: () => Promise<CertifyInfo>) => {
    setBusy(true);
    try {
      const next = await call();
      setEditing(false);
      await done(next);
    } catch {
      // the request layer showed why
    } finally {
      setBusy(false);
    }
  };
  return { editing, setEditing, busy, run };
}

function Certified({ info, onUpgrade }: { info: CertifyInfo; onUpgrade: () => void }) {
  const e = info.enterprise;
  return (
    <Result
      status="success"
      title={`已完成${CertType.label(info.certType)}`}
      subTitle={info.certType === 'Enterprise' ? `${e?.companyName}（${e?.creditCode}）` : `${info.personal?.name}（${info.personal?.idNumber}）`}
      extra={
        info.certType === 'Personal' &&
        (e?.status === 'Pending' ? (
          <Alert type="info" showIcon title="企业认证审核中，预计 1 个工作日内完成" />
        ) : (
          <Space direction="vertical">
            {e?.status === 'Failed' && <Alert type="warning" showIcon title={`企业认证未通过：${e.reason}`} />}
            <Button onClick={onUpgrade}>升级为企业认证</Button>
          </Space>
        ))
      }
    />
  );
}

/** A form rule from a contract check that names what is wrong with a number (null when it is right). */
function numberRule(empty: string, problemOf: (v: string) => string | null) {
  return {
    validator: async (_: unknown, v?: string) => {
      if (!v) throw new Error(empty);
      const problem = problemOf(v);
      if (problem) throw new Error(problem);
    },
  };
}

const idRule = numberRule('请输入身份证号', residentIdProblem);

/** A person's name as on an ID card: the holder's, or a company's legal representative's. */
function personNameRules(empty: string) {
  return [
    { required: true, message: empty },
    { pattern: /^[\u3400-\u9fff·•A-Za-z ]{2,30}$/u, message: '姓名须为 2-30 个汉字或字母' },
  ];
}

/**
 * Saved details waiting for the buyer's go-ahead: confirming submits them as they are, 修改信息
 * reopens the form with them.
 */
function SavedDetails({
  note,
  busy,
  confirmText,
  canConfirm = true,
  onConfirm,
  onEdit,
  children,
}: {
  note?: string;
  busy: boolean;
  confirmText: string;
  canConfirm?: boolean;
  onConfirm: () => void;
  onEdit: () => void;
  /** The Descriptions.Item rows. */
  children: ReactNode;
}) {
  return (
    <Flex vertical gap={16}>
      {note && <Alert type="info" showIcon title={note} />}
      <Descriptions bordered column={1} size="small">
        {children}
      </Descriptions>
      <Space>
        <Button type="primary" disabled={!canConfirm} loading={busy} onClick={onConfirm}>
          {confirmText}
        </Button>
        <Button onClick={onEdit}>修改信息</Button>
      </Space>
    </Flex>
  );
}

/** The form the details are typed in, under why the last attempt failed (if it did). */
function DetailsForm<T>({
  failure,
  busy,
  submitText,
  onFinish,
  children,
}: {
  failure: string | null;
  busy: boolean;
  submitText: string;
  onFinish: (values: T) => void;
  children: ReactNode;
}) {
  return (
    <Flex vertical gap={16}>
      {failure && <Alert type="error" showIcon title={failure} />}
      <Form<T> layout="vertical" onFinish={onFinish} requiredMark={false}>
        {children}
        <Button type="primary" htmlType="submit" loading={busy}>
          {submitText}
        </Button>
      </Form>
    </Flex>
  );
}

function PersonalFlow({ info }: { info: CertifyInfo }) {
  const p = info.personal;
  const { editing, setEditing, busy, run } = useStep();

  if (p?.status === 'Pending') return <Result status="info" title="正在核验身份信息，请稍候刷新" />;
  if (p?.status === 'Init' && !editing) {
    return (
      <SavedDetails
        note="请确认以下信息无误。确认后将提交实名核验，结果即时返回；认证通过后不可修改。"
        busy={busy}
        confirmText="确认认证"
        onConfirm={() => run(certifyApi.confirmPersonal)}
        onEdit={() => setEditing(true)}
      >
        <Descriptions.Item label="真实姓名">{p.name}</Descriptions.Item>
        <Descriptions.Item label="身份证号">{p.idNumber}</Descriptions.Item>
      </SavedDetails>
    );
  }
  return (
    <DetailsForm<PersonalCertify>
      failure={p?.status === 'Failed' ? `认证未通过：${p.reason || '信息不一致'}。请核对后重新提交。` : null}
      busy={busy}
      submitText="下一步"
      onFinish={(v) => run(() => certifyApi.submitPersonal(v))}
    >
      <Form.Item name="name" label="真实姓名" rules={personNameRules('请输入真实姓名')}>
        <Input placeholder="与身份证一致" maxLength={30} />
      </Form.Item>
      <Form.Item name="idNumber" label="身份证号" rules={[idRule]} validateTrigger="onBlur">
        <Input placeholder="18 位居民身份证号" maxLength={18} />
      </Form.Item>
    </DetailsForm>
  );
}

const creditRule = numberRule('请输入统一社会信用代码', creditCodeProblem);

function EnterpriseFlow({ info }: { info: CertifyInfo }) {
  const e = info.enterprise;
  const { editing, setEditing, busy, run } = useStep();
  const upload = (file: File) => void run(() => certifyApi.uploadLicence(file));

  if (e?.status === 'Pending') return <Result status="info" title="企业认证审核中" subTitle="运营人员将在 1 个工作日内完成审核，结果会显示在此页面。" />;
  if (e?.status === 'Init' && !editing) {
    return (
      <SavedDetails
        busy={busy}
        confirmText="提交审核"
        canConfirm={e.licenceUploaded}
        onConfirm={() => run(certifyApi.confirmEnterprise)}
        onEdit={() => setEditing(true)}
      >
        <Descriptions.Item label="企业名称">{e.companyName}</Descriptions.Item>
        <Descriptions.Item label="统一社会信用代码">{e.creditCode}</Descriptions.Item>
        <Descriptions.Item label="法定代表人">{e.legalPerson}</Descriptions.Item>
        <Descriptions.Item label="联系人">{`${e.contactName}（${e.contactMobile}）`}</Descriptions.Item>
        <Descriptions.Item label="营业执照">
          <Space>
            {e.licenceUploaded ? '已上传' : '未上传'}
            <ReviewImageUpload what="营业执照" onUpload={upload}>
              <Button icon={<UploadOutlined />} loading={busy}>
                {e.licenceUploaded ? '重新上传' : '上传营业执照'}
              </Button>
            </ReviewImageUpload>
          </Space>
        </Descriptions.Item>
      </SavedDetails>
    );
  }
  return (
    <DetailsForm<EnterpriseCertify>
      failure={e?.status === 'Failed' ? `企业认证未通过：${e.reason}。请修改后重新提交。` : null}
      busy={busy}
      submitText="下一步：上传营业执照"
      onFinish={(v) => run(() => certifyApi.submitEnterprise(v))}
    >
      <Form.Item
        name="companyName"
        label="企业名称"
        rules={[
          { required: true, message: '请输入企业名称' },
          { min: 2, max: 100, message: '企业名称为 2-100 个字符' },
        ]}
      >
        <Input placeholder="与营业执照一致" />
      </Form.Item>
      <Form.Item name="creditCode" label="统一社会信用代码" rules={[creditRule]} validateTrigger="onBlur">
        <Input placeholder="18 位统一社会信用代码" maxLength={18} />
      </Form.Item>
      <Form.Item name="legalPerson" label="法定代表人" rules={personNameRules('请输入法定代表人')}>
        <Input />
      </Form.Item>
      <Form.Item
        name="contactName"
        label="联系人"
        rules={[
          { required: true, message: '请输入联系人' },
          { max: 30, message: '联系人不能超过 30 个字符' },
        ]}
      >
        <Input />
      </Form.Item>
      <Form.Item
        name="contactMobile"
        label="联系电话"
        rules={[
          { required: true, message: '请输入手机号' },
          { pattern: /^1[3-9]\d{9}$/, message: '请输入正确的 11 位手机号' },
        ]}
      >
        <Input maxLength={11} />
      </Form.Item>
    </DetailsForm>
  );
}
