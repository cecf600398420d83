/** "12.1" < "12.4" as versions, not as strings ("9.0" < "11.8"). */
export function compareVersion(a: string, b: string): number {
  const [a1 = 0, a2 = 0] = a.split('.').map(Number);
  const [b1 = 0, b2 = 0] = b.split('.').map(Number);
  return a1 - b1 || a2 - b2;
}
