import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery, SandboxViolation, SqlSyntax, UnknownTable } from '../../src/errors.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import { ATTACK_PARAMETERS, ATTACK_TABLES, SQL_ATTACKS } from '../fixtures/sql-attacks.ts';

const ERROR_CLASSES = { SqlSyntax, SandboxViolation, UnknownTable, InvalidQuery };

beforeAll(() => initSqlParser());

describe('the attack corpus', () => {
  it('is large and its labels are unique', () => {
    expect(SQL_ATTACKS.length).toBeGreaterThanOrEqual(150);
    expect(new Set(SQL_ATTACKS.map((attack) => attack.label)).size).toBe(SQL_ATTACKS.length);
  });

  it.each(SQL_ATTACKS.map((attack) => [attack.label, attack] as const))('refuses %s', (_label, attack) => {
    const refusal = (() => {
      try {
        parseSandboxQuery(attack.sql, { allowedTables: ATTACK_TABLES, parameterNames: ATTACK_PARAMETERS });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refusal, 'accepted').toBeInstanceOf(ERROR_CLASSES[attack.error]);
    const error = refusal as SqlSyntax;
    expect(error.code).toBe(attack.code);
    if (attack.mentions) expect(error.message).toContain(attack.mentions);
  });
});
