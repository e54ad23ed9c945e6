"""kernels package of readgaze."""
