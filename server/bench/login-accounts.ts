/** The mobile number of the login storm's i-th account (bench/serve.ts seeds them when BENCH_LOGIN_ACCOUNTS is set). */
export function benchLoginMobile(i: number): string {
  return `1370000${String(i).padStart(4, '0')}`;
}
