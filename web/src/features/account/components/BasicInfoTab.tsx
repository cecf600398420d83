import { Avatar, Button, Descriptions, Space, Tag, Upload } from 'antd';
import { UploadOutlined, UserOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { formatMinute } from '../../../lib/time';
import { AccountType, CertStatus, CertType, PAGE } from '@console/contract';
import { userApi } from '../../../api/user';
import { session } from '../../../session/store';
import { useSession } from '../../../session/useSession';
import { CertTag } from './CertTag';

export function BasicInfoTab() {
  const { user } = useSession();
  if (!user) return null;
  const upload = async (file: File) => {
    const updated = await userApi.uploadLogo(file).catch(() => null);
    if (updated) session.setUser(updated);
    return false;
  };
  return (
    <Descriptions column={1} bordered size="middle" styles={{ label: { width: 160 } }}>
      <Descriptions.Item label="头像">
        <Space>
          <Avatar size={56} src={user.logo || undefined} icon={<UserOutlined />} />
          <Upload accept="image/png,image/jpeg,image/webp,image/gif" showUploadList={false} beforeUpload={(f) => upload(f)}>
            <Button icon={<UploadOutlined />}>更换头像</Button>
          </Upload>
        </Space>
      </Descriptions.Item>
      {user.isChild ? (
        <Descriptions.Item label="子账号">{user.childName}</Descriptions.Item>
      ) : (
        <>
          <Descriptions.Item label="手机号">{user.mobile || '未绑定'}</Descriptions.Item>
          <Descriptions.Item label="邮箱">{user.email || <Link to={`${PAGE.account}?tab=security`}>去绑定</Link>}</Descriptions.Item>
          <Descriptions.Item label="账号类型">{AccountType.label(user.accountType)}</Descriptions.Item>
        </>
      )}
      <Descriptions.Item label="实名认证">
        <Space>
          <CertTag type={user.certType} status={user.certStatus} />
          {!user.isChild && !user.certified && <Link to={`${PAGE.account}?tab=checkInfo`}>去认证</Link>}
        </Space>
      </Descriptions.Item>
      {!user.isChild && (
        <Descriptions.Item label="学生认证">
          {user.isStudent ? <Tag color="purple">已认证学生</Tag> : <Link to={`${PAGE.account}?tab=student`}>申请学生认证，享学生价</Link>}
        </Descriptions.Item>
      )}
      <Descriptions.Item label="注册时间">{formatMinute(user.createAt)}</Descriptions.Item>
      <Descriptions.Item label="认证说明">
        {CertType.label('Personal')}：姓名与身份证号核验，即时完成；{CertType.label('Enterprise')}：上传营业执照，人工审核（{CertStatus.label('Pending')}约 1
        个工作日）。
      </Descriptions.Item>
    </Descriptions>
  );
}
