/** The MCP panel's robot icon, themed like JupyterLab's own (`jp-icon3`). */
import { LabIcon } from '@jupyterlab/ui-components';

import robotSvg from '../style/icons/robot.svg';

export const robotIcon = new LabIcon({ name: 'jupyter-mcp-ext:robot', svgstr: robotSvg });
