/** vitest setup of the server suites, run in every test file's worker before the file. */
import { setPasswordHashCostForTests } from '../src/modules/users/passwords.js';

// A thirty-second of the real scrypt cost (N=2^10 instead of 2^15, the same r and p and the same format):
// registering and logging in take milliseconds instead of a tenth of a second or more. hashing.test.ts,
// which measures bursts of real hashes, sets PASSWORD_HASH_COST back.
setPasswordHashCostForTests({ N: 1 << 10, r: 8, p: 1 });
