/**
 * The panel's model against the server's routes (`test/server.ts`) and its activity events: it
 * refetches only the list an event names, folds a burst into one more fetch, follows the journal
 * from the events while none is missed, tells of each approval once, and turns a failure into a
 * message a person reads (in the page's language).
 */
import { Event } from '@jupyterlab/services';
import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';
import { beforeEach, describe, expect, it } from 'vitest';

import { ACTIVITY_SCHEMA, IEntrySummary } from '../src/api';
import { McpModel } from '../src/model';
import { approval, session, TestServer } from './server';

/** The server's event bus, as the model listens to it. */
class Bus {
  readonly stream = new Signal<unknown, Event.Emission>(this);
  emit(data: { [key: string]: unknown }): void {
    this.stream.emit({ schema_id: ACTIVITY_SCHEMA, version: '1', ...data } as Event.Emission);
  }
}

/** Lets every pending promise and timer of the model run to its end. */
const settled = () => new Promise(resolve => setTimeout(resolve, 0));

function summary(id: number): IEntrySummary {
  return {
    id,
    time: '2026-01-01T00:00:00Z',
    agent: 's1',
    client: 'Claude Code',
    tool: 'update_cell',
    path: 'a.ipynb',
    revertible: true,
    more_changes: 0,
    changes: [{ kind: 'update', cell_id: 'c1' }],
    review: { state: 'pending', cells: [] }
  } as unknown as IEntrySummary;
}

let server: TestServer;
let bus: Bus;
let model: McpModel;

beforeEach(async () => {
  server = new TestServer();
  bus = new Bus();
  model = new McpModel(server.api(), bus.stream);
  await model.refreshAll();
  server.requests = [];
});

describe('lists', () => {
  it('fetches every list once on start', async () => {
    const fresh = new McpModel(server.api(), bus.stream);
    server.sessions = [session('s1', 'running')];
    await fresh.refreshAll();
    expect(server.requests.sort()).toEqual(
      ['GET agents', 'GET approvals', 'GET info', 'GET journal', 'GET policy', 'GET sessions'].sort()
    );
    expect(fresh.sessions.map(s => s.id)).toEqual(['s1']);
    expect(fresh.activity).toEqual({ agents: 1, running: true, waiting: false });
  });

  it('folds a burst of refreshes into one more fetch after the one in flight', async () => {
    const release = server.hold();
    const calls = [1, 2, 3, 4, 5].map(() => model.refresh('session'));
    await settled();
    expect(server.count('GET sessions')).toBe(1);
    server.sessions = [session('s1')];
    release();
    await Promise.all(calls);
    expect(server.count('GET sessions')).toBe(2);
    expect(model.sessions.map(s => s.id)).toEqual(['s1']);
  });

  it('keeps the last list and says what failed when the server refuses', async () => {
    server.sessions = [session('s1')];
    await model.refresh('session');
    server.failures.sessions = [500, 'the server broke'];
    await model.refresh('session');
    expect(model.sessions.map(s => s.id)).toEqual(['s1']);
    expect(model.message).toEqual({ text: 'sessions: the server broke', level: 'error' });
  });

  it('shows no agents, and no error, to a person who may not manage them', async () => {
    server.failures.agents = [403, 'Forbidden'];
    await model.refresh('agent');
    expect(model.agents).toEqual([]);
    expect(model.message).toBeNull();
  });
});

describe('events', () => {
  it('refetches only the list an event names', async () => {
    bus.emit({ kind: 'policy', seq: 1 });
    await settled();
    expect(server.requests).toEqual(['GET policy']);
  });

  it('ignores events of other schemas', async () => {
    bus.stream.emit({ schema_id: 'https://other/events', version: '1', kind: 'policy' } as Event.Emission);
    await settled();
    expect(server.requests).toEqual([]);
  });

  it('passes journal entries on while no event is missed, and asks for the journal after a gap', async () => {
    const entries: number[] = [];
    let reads = 0;
    model.journalEntry.connect((_, entry) => entries.push(entry.id));
    model.journalChanged.connect(() => (reads += 1));
    bus.emit({ kind: 'journal', seq: 1, entry: summary(1) });
    bus.emit({ kind: 'journal', seq: 2, entry: summary(2) });
    expect(entries).toEqual([1, 2]);
    expect(reads).toBe(0);
    bus.emit({ kind: 'journal', seq: 4, entry: summary(4) }); // seq 3 was lost
    expect(entries).toEqual([1, 2]);
    expect(reads).toBe(1);
    bus.emit({ kind: 'journal', seq: 1, entry: summary(5) }); // the server restarted
    expect(reads).toBe(2);
  });

  it('after a stop, refetches every list but the policy', async () => {
    bus.emit({ kind: 'stop', seq: 1 });
    await settled();
    expect(server.requests.sort()).toEqual(['GET agents', 'GET approvals', 'GET journal', 'GET sessions']);
  });
});

describe('approvals', () => {
  it('tells of each request once, and of each one settled', async () => {
    const requested: string[] = [];
    const settledIds: string[] = [];
    model.approvalRequested.connect((_, a) => requested.push(a.id));
    model.approvalSettled.connect((_, id) => settledIds.push(id));
    server.approvals = [approval('a1')];
    await model.refresh('approval');
    server.approvals = [approval('a1'), approval('a2')];
    await model.refresh('approval');
    expect(requested).toEqual(['a1', 'a2']);
    expect(model.activity.waiting).toBe(true);
    server.approvals = [approval('a2')];
    await model.refresh('approval');
    expect(settledIds).toEqual(['a1']);
  });

  it('sends the decision, then reads the list again', async () => {
    await model.decide('a1', 'approve', true);
    expect(server.requests).toEqual([
      'POST approvals/a1 {"decision":"approve","rest_of_turn":true}',
      'GET approvals'
    ]);
  });
});

describe('set-ups and tokens', () => {
  it('gives the URL alone, and the minted token only to hosts that carry a header', async () => {
    expect(model.snippet('codex')).toBe('url = "http://lab.test/mcp"');
    server.answers.agents = [200, { token: 'secret', agent: { id: 'g1', name: 'Nightly', policy: 'ask' } }];
    await model.mint('Nightly', 'ask');
    expect(model.snippet('codex')).toBe('url = "http://lab.test/mcp"\nbearer = "secret"');
    expect(model.snippet('claude')).not.toContain('secret'); // a command line never carries it
    model.dismissMinted();
    expect(model.snippet('codex')).not.toContain('secret');
  });
});

describe('what the person reads', () => {
  it('says what a revert did and what it could not', async () => {
    server.answers.revert = [409, { reverted: [], conflicts: [{ entry: 3, reason: 'edited since' }] }];
    await model.revertEntry(3);
    expect(model.message).toEqual({ text: 'Nothing reverted. #3: edited since', level: 'error' });
    server.answers.revert = [200, { reverted: [4, 5], conflicts: [] }];
    await model.revertSince('s1', 4);
    expect(model.message).toEqual({ text: 'Reverted 2 change(s).', level: 'info' });
  });

  it('says what a stop ended', async () => {
    server.answers.stop = [200, { cancelled: 1, interrupted: 2, sessions_ended: 3 }];
    await model.stop();
    expect(model.message?.text).toBe('Stopped: 1 call(s) cancelled, 2 run(s) interrupted, 3 session(s) ended.');
  });

  it("puts its messages through the page's translator", async () => {
    const shouting = nullTranslator.load('jupyter-mcp-ext');
    const trans = {
      ...shouting,
      __: (text: string, ...args: unknown[]) => shouting.__(text.toUpperCase(), ...(args as string[]))
    } as TranslationBundle;
    const translated = new McpModel(server.api(), bus.stream, trans);
    server.answers.stop = [200, { cancelled: 0, interrupted: 0, sessions_ended: 1 }];
    await translated.stop();
    expect(translated.message?.text).toBe('STOPPED: 0 CALL(S) CANCELLED, 0 RUN(S) INTERRUPTED, 1 SESSION(S) ENDED.');
  });
});
