/** The tables of the catalogue module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

// Loaded from the operator's seed file (server/catalogue/catalogue.json) at start; rows that leave
// the file are deactivated, never deleted, because orders and instances refer to them.
const sortAndActive = {
  sort: integer('sort').notNull().default(0),
  active: boolean('active').notNull().default(true),
};

export const catalogueRegions = pgTable('catalogue_regions', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  area: text('area').notNull().default(''),
  ...sortAndActive,
});

export const catalogueRooms = pgTable('catalogue_rooms', {
  id: text('id').primaryKey(),
  regionId: text('region_id').notNull(),
  name: text('name').notNull(),
  zones: jsonb('zones').$type<string[]>().notNull(),
  isDefault: boolean('is_default').notNull().default(false),
  ...sortAndActive,
});

export const catalogueGpuTypes = pgTable('catalogue_gpu_types', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  memoryGb: integer('memory_gb').notNull(),
  architecture: text('architecture').notNull(),
  cudaCapability: text('cuda_capability').notNull(),
  minCuda: text('min_cuda').notNull(),
  fp32Tflops: doublePrecision('fp32_tflops').notNull(),
  description: text('description').notNull().default(''),
  ...sortAndActive,
});

/** The fleet's hosts. gpu_free is live inventory: the compute side reserves and releases cards. */
export const catalogueHosts = pgTable(
  'catalogue_hosts',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    roomId: text('room_id').notNull(),
    zone: text('zone').notNull(),
    gpuTypeId: text('gpu_type_id').notNull(),
    gpuTotal: integer('gpu_total').notNull(),
    gpuFree: integer('gpu_free').notNull(),
    cpuModel: text('cpu_model').notNull(),
    cpuPerGpu: integer('cpu_per_gpu').notNull(),
    memoryGbPerGpu: integer('memory_gb_per_gpu').notNull(),
    systemDiskGb: integer('system_disk_gb').notNull(),
    dataDiskFreeGb: integer('data_disk_free_gb').notNull(),
    dataDiskMaxGb: integer('data_disk_max_gb').notNull(),
    maxCuda: text('max_cuda').notNull(),
    ...sortAndActive,
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('catalogue_hosts_room_idx').on(t.roomId), check('catalogue_hosts_free_range', sql`${t.gpuFree} >= 0 and ${t.gpuFree} <= ${t.gpuTotal}`)],
);

export const catalogueSizes = pgTable('catalogue_sizes', {
  id: text('id').primaryKey(),
  category: text('category', { enum: ['Generic', 'Desktop', 'Ebusiness', 'Game'] }).notNull(),
  name: text('name').notNull(),
  cpu: integer('cpu').notNull(),
  memoryGb: integer('memory_gb').notNull(),
  systemDiskGb: integer('system_disk_gb').notNull(),
  bandwidthMbps: integer('bandwidth_mbps').notNull(),
  gpuName: text('gpu_name').notNull().default(''),
  regionIds: jsonb('region_ids').$type<string[]>().notNull(),
  description: text('description').notNull().default(''),
  ...sortAndActive,
});

export const catalogueImages = pgTable('catalogue_images', {
  id: text('id').primaryKey(),
  kind: text('kind', { enum: ['os', 'framework'] }).notNull(),
  name: text('name').notNull(),
  os: text('os').notNull(),
  framework: text('framework').notNull().default(''),
  frameworkVersion: text('framework_version').notNull().default(''),
  cuda: text('cuda').notNull().default(''),
  python: text('python').notNull().default(''),
  forGpu: boolean('for_gpu').notNull(),
  forCategories: jsonb('for_categories').$type<string[]>().notNull(),
  description: text('description').notNull().default(''),
  /** The OCI image (reference) machines of this image boot from; null: the host's own system (the simulated fleet's demonstration images). */
  oci: text('oci'),
  ...sortAndActive,
});

export const catalogueApplications = pgTable('catalogue_applications', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  category: text('category').notNull(),
  description: text('description').notNull(),
  cover: text('cover').notNull(),
  defaultPort: integer('default_port').notNull(),
  imageId: text('image_id').notNull(),
  minGpuMemoryGb: integer('min_gpu_memory_gb').notNull(),
  tags: jsonb('tags').$type<string[]>().notNull(),
  ...sortAndActive,
});

/** List price of one cycle unit (0.0001 yuan) and the operator's discount for it (10000 = none). */
export const cataloguePrices = pgTable(
  'catalogue_prices',
  {
    productKind: text('product_kind', { enum: ['gpu', 'size'] }).notNull(),
    productId: text('product_id').notNull(),
    cycle: text('cycle', { enum: ['Usage', 'Hour', 'Day', 'Week', 'Month'] }).notNull(),
    listPrice: bigint('list_price', { mode: 'bigint' }).notNull(),
    discountBp: integer('discount_bp').notNull(),
  },
  (t) => [primaryKey({ columns: [t.productKind, t.productId, t.cycle] })],
);

/** Catalogue-wide settings, and the catalogue's state: `published` (its version, published.ts) and `version` (a change counter the caches watch, store.ts). */
export const catalogueState = pgTable('catalogue_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
  updatedAt: ts('updated_at').notNull(),
});
