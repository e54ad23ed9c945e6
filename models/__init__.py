"""models package of readgaze."""
