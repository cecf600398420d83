CREATE TABLE "local_host_uids" (
	"owner" text PRIMARY KEY NOT NULL,
	"seq" serial NOT NULL,
	CONSTRAINT "local_host_uids_seq_unique" UNIQUE("seq")
);
