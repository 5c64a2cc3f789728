import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backupName, backupPattern, selectExpiredBackups, type BackupFile } from '../../src/rotating-file.js';

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.parse('2024-03-10T12:00:00.000Z');

function backup(stamp: string, ageDays: number, index = 1): BackupFile {
  return { name: `app-${stamp}.log`, stamp, index, mtimeMs: NOW - ageDays * DAY };
}

describe('backup names', () => {
  const time = new Date('2024-03-05T07:08:09.010Z');

  it("uses lumberjack's layout in UTC", () => {
    assert.equal(backupName('/var/log/app.log', time, 1, false), 'app-2024-03-05T07-08-09.010.log');
    assert.equal(backupName('/var/log/app.log', time, 1, true), 'app-2024-03-05T07-08-09.010.log.gz');
    assert.equal(backupName('/var/log/app', time, 1, false), 'app-2024-03-05T07-08-09.010');
  });

  it('adds an index when two rotations share a millisecond', () => {
    assert.equal(backupName('/var/log/app.log', time, 2, false), 'app-2024-03-05T07-08-09.010-2.log');
  });

  it('recognises its own backups and nothing else', () => {
    const pattern = backupPattern('/var/log/app.log');
    for (const name of [
      'app-2024-03-05T07-08-09.010.log',
      'app-2024-03-05T07-08-09.010.log.gz',
      'app-2024-03-05T07-08-09.010-2.log',
    ]) {
      assert.ok(pattern.test(name), name);
    }
    for (const name of [
      'app.log',
      'other-2024-03-05T07-08-09.010.log',
      'app-2024-03-05.log',
      'app-2024-03-05T07-08-09.010.txt',
    ]) {
      assert.ok(!pattern.test(name), name);
    }
  });
});

describe('selectExpiredBackups', () => {
  const backups = [
    backup('2024-03-01T00-00-00.000', 9),
    backup('2024-03-09T00-00-00.000', 1),
    backup('2024-03-09T00-00-00.000', 1, 2),
    backup('2024-02-01T00-00-00.000', 38),
    backup('2024-03-05T00-00-00.000', 5),
  ];
  const names = (files: BackupFile[]): string[] => files.map((f) => `${f.stamp}#${f.index}`).sort();

  it('keeps the newest maxBackups', () => {
    const expired = selectExpiredBackups(backups, { maxBackups: 2, maxAgeDays: 0, nowMs: NOW });
    assert.deepEqual(names(expired), [
      '2024-02-01T00-00-00.000#1',
      '2024-03-01T00-00-00.000#1',
      '2024-03-05T00-00-00.000#1',
    ]);
  });

  it('removes backups older than maxAge days', () => {
    const expired = selectExpiredBackups(backups, { maxBackups: 0, maxAgeDays: 7, nowMs: NOW });
    assert.deepEqual(names(expired), ['2024-02-01T00-00-00.000#1', '2024-03-01T00-00-00.000#1']);
  });

  it('applies both limits together', () => {
    const expired = selectExpiredBackups(backups, { maxBackups: 4, maxAgeDays: 30, nowMs: NOW });
    assert.deepEqual(names(expired), ['2024-02-01T00-00-00.000#1']);
  });

  it('keeps everything when both limits are 0', () => {
    assert.deepEqual(selectExpiredBackups(backups, { maxBackups: 0, maxAgeDays: 0, nowMs: NOW }), []);
  });
});
