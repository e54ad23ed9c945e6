"""The data side of the models: a dataset folder and a fold become batches.

=================  ===========================================================================================
``datamodule.py``  :class:`ReadingDataModule`: read the tables, split by fold and regime, features, scalers
``tasks.py``       the tasks: which trials each takes, its label, the second text segment
``features.py``    word-, fixation- and trial-level feature columns and their encodings
``tokenise.py``    a trial's text through the encoder's tokenizer, each word's token span kept
``dataset.py``     one item per trial, and the collate that pads them
``batch.py``       :class:`ReadingBatch`, the one contract between the data and every model
``goal.py``        the goal-reconstruction datamodule (prompts of paragraph, scanpath and question)
=================  ===========================================================================================
"""

from readgaze.models.data.batch import OFF_TEXT, REGIMES, ReadingBatch
from readgaze.models.data.datamodule import ReadingDataModule
from readgaze.models.data.dataset import collate
from readgaze.models.data.tasks import QUESTION_ROLES, TASKS, TaskSpec

__all__ = ["OFF_TEXT", "QUESTION_ROLES", "REGIMES", "TASKS", "ReadingBatch", "ReadingDataModule", "TaskSpec", "collate"]
