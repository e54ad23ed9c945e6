"""data_prep package of readgaze."""
