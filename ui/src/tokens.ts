/**
 * What the plugins share: the model (one per page, so every view shows the same server state) and
 * the review state of each open notebook (the marks, the review bar and the commands read one).
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';

import { McpModel } from './model';
import { ReviewMarks } from './reviewmarks';

/** The page's MCP model: agents, their journal, the policy and pending approvals. */
export const IMcpModel = new Token<McpModel>(
  'jupyter-mcp-ext:IMcpModel',
  'The MCP model: agents, journal, policy and approvals, as the server tells them.'
);

/** The review state of every open notebook: its agent changes waiting for a person. */
export interface IMcpReviews {
  /** The review of an open notebook, if it has one. */
  get(panel: NotebookPanel | null | undefined): ReviewMarks | undefined;
  /** Each open notebook's review, as the notebook opens. */
  readonly added: ISignal<IMcpReviews, ReviewMarks>;
  /** Every review of a notebook open now. */
  all(): ReviewMarks[];
}

export const IMcpReviews = new Token<IMcpReviews>(
  'jupyter-mcp-ext:IMcpReviews',
  "The agent changes waiting for review in each open notebook (the cell marks' state)."
);
