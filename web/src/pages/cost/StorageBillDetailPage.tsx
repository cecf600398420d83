import { Button, Card, Empty, Flex, Table, Typography } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import { PageFrame } from '../../components/PageFrame';

/**
 * /console/cost/bill/storage-details: the daily storage charges. Nothing is billed for storage
 * until instances with data disks exist, so the table is empty and says so: no example rows.
 */
export default function StorageBillDetailPage() {
  return (
    <PageFrame
      extra={
        <Link to={`${PAGE.bill}?tab=storage`}>
          <Button icon={<ArrowLeftOutlined />}>返回账单</Button>
        </Link>
      }
    >
      <Flex vertical gap={16}>
        <Card title="存储如何计费">
          <ul className="plain-list">
            <li>每台 GPU 实例按卡附带免费数据盘，免费容量以购买页为准，免费部分不产生费用。</li>
            <li>超出免费容量的数据盘按 GB·天计价，按小时折算、每日汇总扣费，并在这里逐日列出。</li>
            <li>数据盘扩容会生成“数据盘扩容”订单，可在“服务器账单”中按类型筛选查看。</li>
          </ul>
        </Card>
        <Card title="存储账单明细">
          <Table
            rowKey="id"
            dataSource={[]}
            pagination={false}
            scroll={{ x: 760 }}
            columns={[
              { title: '日期', key: 'date' },
              { title: '实例', key: 'instance' },
              { title: '存储类型', key: 'kind' },
              { title: '计费容量（GB）', key: 'size', align: 'right' },
              { title: '计费时长（小时）', key: 'hours', align: 'right' },
              { title: '金额（元）', key: 'amount', align: 'right' },
            ]}
            locale={{
              emptyText: (
                <Empty
                  image={Empty.PRESENTED_IMAGE_SIMPLE}
                  description={
                    <Flex vertical gap={4} align="center">
                      <Typography.Text>暂无存储账单</Typography.Text>
                      <Typography.Text type="secondary">存储计费将随实例一同上线：实例使用超出免费容量的数据盘后，每日费用会显示在这里。</Typography.Text>
                    </Flex>
                  }
                />
              ),
            }}
          />
        </Card>
      </Flex>
    </PageFrame>
  );
}
