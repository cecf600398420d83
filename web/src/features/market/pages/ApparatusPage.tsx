import { Card, Col, Row, Statistic, theme } from 'antd';
import { useQuery } from '@tanstack/react-query';
import type { GpuType } from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { GpuTypeTable } from '../components/GpuTypeTable';
import { PublicPage } from '../../../components/PublicPage';

function totals(types: GpuType[] | undefined) {
  if (!types) return undefined;
  return {
    models: types.length,
    total: types.reduce((n, t) => n + t.gpuTotal, 0),
    free: types.reduce((n, t) => n + t.gpuFree, 0),
  };
}

/** /apparatus: the compute devices — every GPU model in service, its specs, capacity and price. */
export default function ApparatusPage() {
  const types = useQuery(catalogueQueries.gpuTypes());
  const { token } = theme.useToken();
  const sum = totals(types.data);
  return (
    <PublicPage title="算力设备" intro="平台在售的 GPU 型号、规格参数与实时空闲卡数。">
      <Row gutter={[20, 20]} style={{ marginBottom: 20 }}>
        <Col xs={24} sm={8}>
          <Card>
            <Statistic title="GPU 型号" value={sum?.models ?? '--'} suffix={sum ? '种' : undefined} loading={types.isPending} />
          </Card>
        </Col>
        <Col xs={24} sm={8}>
          <Card>
            <Statistic title="GPU 总卡数" value={sum?.total ?? '--'} suffix={sum ? '卡' : undefined} loading={types.isPending} />
          </Card>
        </Col>
        <Col xs={24} sm={8}>
          <Card>
            <Statistic
              title="当前空闲"
              value={sum?.free ?? '--'}
              suffix={sum ? '卡' : undefined}
              loading={types.isPending}
              styles={{ content: { color: token.colorPrimary } }}
            />
          </Card>
        </Col>
      </Row>
      <Card title="GPU 规格一览" styles={{ body: { padding: 0 } }}>
        <GpuTypeTable query={types} mode="devices" />
      </Card>
    </PublicPage>
  );
}
