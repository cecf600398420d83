CREATE TABLE "catalogue_applications" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"category" text NOT NULL,
	"description" text NOT NULL,
	"cover" text NOT NULL,
	"default_port" integer NOT NULL,
	"image_id" text NOT NULL,
	"min_gpu_memory_gb" integer NOT NULL,
	"tags" jsonb NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_gpu_types" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"memory_gb" integer NOT NULL,
	"architecture" text NOT NULL,
	"cuda_capability" text NOT NULL,
	"min_cuda" text NOT NULL,
	"fp32_tflops" double precision NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_hosts" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"room_id" text NOT NULL,
	"zone" text NOT NULL,
	"gpu_type_id" text NOT NULL,
	"gpu_total" integer NOT NULL,
	"gpu_free" integer NOT NULL,
	"cpu_model" text NOT NULL,
	"cpu_per_gpu" integer NOT NULL,
	"memory_gb_per_gpu" integer NOT NULL,
	"system_disk_gb" integer NOT NULL,
	"data_disk_free_gb" integer NOT NULL,
	"data_disk_max_gb" integer NOT NULL,
	"max_cuda" text NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "catalogue_hosts_free_range" CHECK ("catalogue_hosts"."gpu_free" >= 0 and "catalogue_hosts"."gpu_free" <= "catalogue_hosts"."gpu_total")
);
--> statement-breakpoint
CREATE TABLE "catalogue_images" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"os" text NOT NULL,
	"framework" text DEFAULT '' NOT NULL,
	"framework_version" text DEFAULT '' NOT NULL,
	"cuda" text DEFAULT '' NOT NULL,
	"python" text DEFAULT '' NOT NULL,
	"for_gpu" boolean NOT NULL,
	"for_categories" jsonb NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_prices" (
	"product_kind" text NOT NULL,
	"product_id" text NOT NULL,
	"cycle" text NOT NULL,
	"list_price" bigint NOT NULL,
	"discount_bp" integer NOT NULL,
	CONSTRAINT "catalogue_prices_product_kind_product_id_cycle_pk" PRIMARY KEY("product_kind","product_id","cycle")
);
--> statement-breakpoint
CREATE TABLE "catalogue_regions" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"area" text DEFAULT '' NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_rooms" (
	"id" text PRIMARY KEY NOT NULL,
	"region_id" text NOT NULL,
	"name" text NOT NULL,
	"zones" jsonb NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_sizes" (
	"id" text PRIMARY KEY NOT NULL,
	"category" text NOT NULL,
	"name" text NOT NULL,
	"cpu" integer NOT NULL,
	"memory_gb" integer NOT NULL,
	"system_disk_gb" integer NOT NULL,
	"bandwidth_mbps" integer NOT NULL,
	"gpu_name" text DEFAULT '' NOT NULL,
	"region_ids" jsonb NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"sort" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalogue_state" (
	"key" text PRIMARY KEY NOT NULL,
	"value" jsonb NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "vouchers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text NOT NULL,
	"amount" bigint NOT NULL,
	"min_spend" bigint DEFAULT 0 NOT NULL,
	"categories" jsonb NOT NULL,
	"status" text DEFAULT 'Unused' NOT NULL,
	"valid_from" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "vouchers" ADD CONSTRAINT "vouchers_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "catalogue_hosts_room_idx" ON "catalogue_hosts" USING btree ("room_id");--> statement-breakpoint
CREATE INDEX "vouchers_user_idx" ON "vouchers" USING btree ("user_id","status");