/** The review bar plugin: over each open notebook, what agents changed that waits for review. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { ReviewBar } from '../reviewbar';
import { IMcpReviews } from '../tokens';

export const reviewBarPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp-ext:review-bar',
  description: 'The review bar over a notebook: agent changes waiting for review, with Keep all and Undo all.',
  autoStart: true,
  requires: [IMcpReviews],
  activate: (app: JupyterFrontEnd, reviews: IMcpReviews) => {
    reviews.all().forEach(marks => new ReviewBar(marks));
    reviews.added.connect((_, marks) => new ReviewBar(marks));
  }
};
